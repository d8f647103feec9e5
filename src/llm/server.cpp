// kiln::llm::Server: cpp-httplib's server with OpenAI's routes. Requests are parsed and tokenized on
// the connection's thread; generation holds the model's mutex, so each request runs alone on the KV
// cache and gets its whole answer. A streamed answer generates inside httplib's content provider,
// writing one server-sent event per piece of text.
#include "kiln/llm_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include "kiln/error.h"
#include "llm/openai.h"

namespace kiln::llm {

using nlohmann::json;

namespace {

// A request checked and tokenized, ready to generate.
struct Job {
  CompletionRequest request;
  CompletionMeta meta;
  std::vector<int32_t> prompt;
  std::vector<std::string> stops;
  int max_tokens = 0;
};

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

bool send_event(httplib::DataSink& sink, const std::string& data) {
  const std::string event = "data: " + data + "\n\n";
  return sink.write(event.data(), event.size());
}

}  // namespace

struct Server::Impl {
  Model& model;
  const Tokenizer& tokenizer;
  ServerOptions options;
  httplib::Server http;
  int port = 0;
  std::mutex generating;  // one generation at a time: the model has one KV cache
  std::atomic<int64_t> requests{0};
  std::atomic<bool> listening{false}, stopping{false};

  Impl(Model& m, const Tokenizer& t, ServerOptions o) : model(m), tokenizer(t), options(std::move(o)) {}

  Job prepare(const httplib::Request& req, bool chat) {
    Job job;
    job.request = parse_completion_request(req.body, chat);
    const CompletionRequest& r = job.request;
    if (chat && !options.chat_template)
      throw_error("this server has no chat template (its model names none): use /v1/completions");
    job.prompt = chat ? encode_chat(tokenizer, *options.chat_template, r.messages) : tokenizer.encode(r.prompt);
    const int64_t n = static_cast<int64_t>(job.prompt.size()), context = model.max_context();
    if (n == 0) throw_error("the prompt is empty: it has no tokens");
    if (n >= context)
      throw_error("the prompt is ", n, " tokens; the model's context holds ", context,
                  " (with room for one new token at least)");
    for (int32_t id : job.prompt)
      if (id >= model.vocab_size())
        throw_error("the tokenizer gave token ", id, ", outside the model's vocabulary of ", model.vocab_size());
    job.stops = r.stop;
    if (chat)
      for (const std::string& s : chat_stop_strings(*options.chat_template)) job.stops.push_back(s);
    // OpenAI's default: 16 tokens for a completion, as many as fit for a chat answer.
    job.max_tokens = r.max_tokens.value_or(chat ? static_cast<int>(context - n) : 16);
    job.meta = {
        std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(requests++),
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
        options.model_name, chat};
    return job;
  }

  TextGeneration run(const Job& job, const std::function<bool(const std::string&)>& on_text) {
    std::lock_guard<std::mutex> lock(generating);
    return generate_text(model, tokenizer, job.prompt, job.max_tokens, job.request.sampling, job.stops, on_text);
  }

  void complete(const httplib::Request& req, httplib::Response& res, bool chat) {
    auto job = std::make_shared<Job>();
    try {
      *job = prepare(req, chat);
    } catch (const Error& e) {
      return send_json(res, 400, error_json(e.what()));
    }
    if (!job->request.stream) {
      try {
        send_json(res, 200, completion_response(job->meta, run(*job, {})));
      } catch (const std::exception& e) {  // the request was good: the server failed
        send_json(res, 500, error_json(e.what(), "server_error"));
      }
      return;
    }
    res.set_chunked_content_provider("text/event-stream", [this, job](size_t, httplib::DataSink& sink) {
      bool first = true;
      try {
        const TextGeneration g = run(*job, [&](const std::string& text) {
          return send_event(sink, dump(completion_chunk(job->meta, text, nullptr, std::exchange(first, false))));
        });
        send_event(sink, dump(completion_chunk(job->meta, "", &g, first)));
      } catch (const std::exception& e) {
        send_event(sink, dump(error_json(e.what(), "server_error")));
      }
      send_event(sink, "[DONE]");
      sink.done();
      return true;
    });
  }
};

Server::Server(Model& model, const Tokenizer& tokenizer, ServerOptions options)
    : impl_(std::make_unique<Impl>(model, tokenizer, std::move(options))) {
  Impl& s = *impl_;
  s.http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}});
  });
  s.http.Get("/v1/models", [&s](const httplib::Request&, httplib::Response& res) {
    const json model = {{"id", s.options.model_name}, {"object", "model"}, {"created", 0}, {"owned_by", "kiln"}};
    send_json(res, 200, {{"object", "list"}, {"data", json::array({model})}});
  });
  s.http.Post("/v1/completions",
              [&s](const httplib::Request& req, httplib::Response& res) { s.complete(req, res, false); });
  s.http.Post("/v1/chat/completions",
              [&s](const httplib::Request& req, httplib::Response& res) { s.complete(req, res, true); });
  // Only SO_REUSEADDR: httplib would add SO_REUSEPORT, which lets two servers share a port unnoticed.
  s.http.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const ServerOptions& o = s.options;
  if (o.port < 0 || o.port > 65535) throw_error("llm::Server: port must be 0 (any) to 65535, got ", o.port);
  s.port = o.port == 0 ? s.http.bind_to_any_port(o.host) : (s.http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (s.port <= 0)
    throw_error("llm::Server: cannot listen on ", o.host, ":", o.port, " (in use, or not this machine's address)");
}

Server::~Server() { stop(); }

int Server::port() const { return impl_->port; }

void Server::listen() {
  Impl& s = *impl_;
  s.listening = true;
  const bool ok = s.stopping || s.http.listen_after_bind();
  s.listening = false;
  if (!ok) throw_error("llm::Server: the server on ", s.options.host, ":", s.port, " stopped with an error");
}

void Server::stop() {
  Impl& s = *impl_;
  s.stopping = true;
  // httplib's stop() does nothing before its accept loop runs: wait for that, unless listen() has not begun
  // (then it sees `stopping`) or has returned.
  while (s.listening && !s.http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s.http.stop();
}

}  // namespace kiln::llm
