#pragma once
// An HTTP server with OpenAI's completion API over one model (what llama.cpp's server offers):
//   GET  /health, GET /v1/models,
//   POST /v1/completions       {"prompt": "...", "max_tokens": 16, "temperature": 1, "stop": [...], "stream": false}
//   POST /v1/chat/completions  {"messages": [{"role": "user", "content": "..."}], ...}
// plus top_k, top_p, min_p, repeat_penalty and seed. "stream": true answers with server-sent events.
// Requests are served concurrently but generate one at a time (the model has one KV cache). A bad
// request gets HTTP 400 with {"error": {"message": ...}}.
//
//   kiln::llm::Server server(model, tokenizer, {.port = 8080, .chat_template = ChatTemplate::Llama3});
//   server.listen();  // until server.stop() from another thread
#include <memory>
#include <optional>
#include <string>

#include "kiln/llm.h"
#include "kiln/llm_chat.h"
#include "kiln/llm_tokenizer.h"

namespace kiln::llm {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                            // 0: any free port (port() says which)
  std::string model_name = "kiln";            // the id /v1/models lists and answers carry
  std::optional<ChatTemplate> chat_template;  // none: chat completions answer 400
};

class Server {
 public:
  // Binds the port (kiln::Error if it cannot). The model and tokenizer must outlive the server.
  Server(Model& model, const Tokenizer& tokenizer, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  void listen();  // serves until stop()
  void stop();    // from any thread; listen() returns once the requests in progress are answered

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::llm
