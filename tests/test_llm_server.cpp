// kiln::llm::Server through real HTTP on 127.0.0.1, over a tiny random model: answers equal what
// Model::generate gives for the same prompt (greedy), decoded by the tokenizer; streamed answers equal
// whole ones; stop strings cut the text where the string first appears; concurrent clients each get
// their whole answer; bad requests get 400. Also the chat templates against the strings their model
// cards document, and TextStream's holding back of text that may start a stop string.
#include <gtest/gtest.h>
#include <httplib.h>

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "kiln/llm_chat.h"
#include "kiln/llm_server.h"
#include "llm/text_stream.h"
#include "llm_fixture.h"

namespace {

using nlohmann::json;
using namespace kiln::llm;
using Ids = std::vector<int32_t>;

constexpr int64_t kContext = 48;

class LlmServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new kt::TempDir("kiln_llm_server");
    kt::write_tiny_model(dir_->dir, static_cast<int64_t>(kt::tiny_vocab().tokens.size()), kContext);
    model_ = new Model(Model::from_safetensors(dir_->dir.string()));
    tokenizer_ = new Tokenizer(Tokenizer::from_vocab(kt::tiny_vocab()));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_;
    delete dir_;
  }

  void SetUp() override {
    server_ = std::make_unique<Server>(
        *model_, *tokenizer_, ServerOptions{.port = 0, .model_name = "tiny", .chat_template = ChatTemplate::Llama2});
    thread_ = std::thread([this] { server_->listen(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_read_timeout(120, 0);
    return c;
  }
  // POSTs `body` (JSON text); the status and the parsed answer (null when it is not JSON).
  std::pair<int, json> post(const std::string& path, const std::string& body) const {
    httplib::Result r = client().Post(path.c_str(), body, "application/json");
    if (!r) return {-1, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  // The events of a streamed answer: each `data:` payload, in order.
  std::vector<std::string> events(const std::string& path, const json& body) const {
    httplib::Result r = client().Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
    std::vector<std::string> out;
    size_t at = 0;
    while (at < r->body.size()) {
      const size_t end = r->body.find("\n\n", at);
      EXPECT_NE(end, std::string::npos) << "an event not ended by a blank line";
      if (end == std::string::npos) break;
      const std::string event = r->body.substr(at, end - at);
      EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
      out.push_back(event.substr(6));
      at = end + 2;
    }
    return out;
  }

  // What generate() makes of `prompt`, greedy, as text after the prompt's.
  static std::string expected(const Ids& prompt, int max_tokens, Ids* generated = nullptr) {
    Ids g = model_->generate(prompt, max_tokens);
    if (generated) *generated = g;
    return kt::continuation(*tokenizer_, prompt, g);
  }

  static kt::TempDir* dir_;
  static Model* model_;
  static Tokenizer* tokenizer_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};
kt::TempDir* LlmServer::dir_ = nullptr;
Model* LlmServer::model_ = nullptr;
Tokenizer* LlmServer::tokenizer_ = nullptr;

TEST_F(LlmServer, HealthAndModels) {
  httplib::Result h = client().Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  httplib::Result m = client().Get("/v1/models");
  ASSERT_TRUE(m);
  const json models = json::parse(m->body);
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "tiny");
}

TEST_F(LlmServer, CompletionEqualsGenerate) {
  const Ids prompt = tokenizer_->encode("hello world");
  Ids generated;
  const std::string want = expected(prompt, 10, &generated);
  auto [status, answer] = post("/v1/completions", R"({"prompt": "hello world", "max_tokens": 10, "temperature": 0})");
  ASSERT_EQ(status, 200) << answer.dump();
  EXPECT_EQ(answer["object"], "text_completion");
  EXPECT_EQ(answer["model"], "tiny");
  ASSERT_EQ(answer["choices"].size(), 1u);
  EXPECT_EQ(answer["choices"][0]["text"], want);
  const bool eos = generated.back() == tokenizer_->eos();
  EXPECT_EQ(answer["choices"][0]["finish_reason"], eos ? "stop" : "length");
  EXPECT_EQ(answer["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(answer["usage"]["completion_tokens"], generated.size());
  EXPECT_EQ(answer["usage"]["total_tokens"], prompt.size() + generated.size());
  // Sampling with a seed: the same seed, the same answer.
  const std::string sampled =
      R"({"prompt": "the", "max_tokens": 8, "temperature": 1.2, "top_k": 5, "top_p": 0.9, "seed": 7})";
  auto [s1, a1] = post("/v1/completions", sampled);
  auto [s2, a2] = post("/v1/completions", sampled);
  ASSERT_EQ(s1, 200);
  EXPECT_EQ(a1["choices"][0]["text"], a2["choices"][0]["text"]);
  const Sampling s{.temperature = 1.2f, .top_k = 5, .top_p = 0.9f, .seed = 7};
  const Ids the = tokenizer_->encode("the");
  EXPECT_EQ(a1["choices"][0]["text"], kt::continuation(*tokenizer_, the, model_->generate(the, 8, s)));
}

TEST_F(LlmServer, ChatCompletionUsesTheTemplate) {
  const std::vector<ChatMessage> messages = {{"system", "be brief"}, {"user", "hello world"}};
  const Ids prompt = encode_chat(*tokenizer_, ChatTemplate::Llama2, messages);
  const std::string want = expected(prompt, 9);
  const json body = {
      {"messages", {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "hello world"}}}},
      {"max_tokens", 9},
      {"temperature", 0}};
  auto [status, answer] = post("/v1/chat/completions", body.dump());
  ASSERT_EQ(status, 200) << answer.dump();
  EXPECT_EQ(answer["object"], "chat.completion");
  EXPECT_EQ(answer["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(answer["choices"][0]["message"]["content"], want);
  EXPECT_EQ(answer["usage"]["prompt_tokens"], prompt.size());
}

TEST_F(LlmServer, StreamedAnswersEqualWholeOnes) {
  for (bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completion");
    json body = {{"max_tokens", 12}, {"temperature", 0}};
    if (chat)
      body["messages"] = {{{"role", "user"}, {"content", "the world"}}};
    else
      body["prompt"] = "the world";
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    auto [status, whole] = post(path, body.dump());
    ASSERT_EQ(status, 200);
    body["stream"] = true;
    const std::vector<std::string> ev = events(path, body);
    ASSERT_GE(ev.size(), 2u);
    EXPECT_EQ(ev.back(), "[DONE]");
    std::string text;
    for (size_t i = 0; i + 1 < ev.size(); i++) {
      const json chunk = json::parse(ev[i]);
      EXPECT_EQ(chunk["object"], chat ? "chat.completion.chunk" : "text_completion");
      const json& choice = chunk["choices"][0];
      const bool last = i + 2 == ev.size();
      EXPECT_EQ(choice["finish_reason"].is_null(), !last) << ev[i];
      if (chat) {
        if (i == 0) EXPECT_EQ(choice["delta"]["role"], "assistant");
        if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
      } else {
        text += choice["text"].get<std::string>();
      }
      if (last) {
        EXPECT_EQ(choice["finish_reason"], whole["choices"][0]["finish_reason"]);
        EXPECT_EQ(chunk["usage"], whole["usage"]);
      }
    }
    EXPECT_EQ(text, chat ? whole["choices"][0]["message"]["content"] : whole["choices"][0]["text"]);
  }
}

TEST_F(LlmServer, StopStringsCutTheText) {
  const Ids prompt = tokenizer_->encode("hello");
  const std::string full = expected(prompt, 16);
  ASSERT_GE(full.size(), 6u) << "the random model ended too soon for this test: " << full;
  const std::string stop = full.substr(4, 2);  // its first appearance may be earlier than at 4
  const std::string want = full.substr(0, full.find(stop));
  json body = {{"prompt", "hello"}, {"max_tokens", 16}, {"temperature", 0}, {"stop", {"never there", stop}}};
  auto [status, answer] = post("/v1/completions", body.dump());
  ASSERT_EQ(status, 200);
  EXPECT_EQ(answer["choices"][0]["text"], want);
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop");
  body["stream"] = true;
  body["stop"] = stop;  // a string, not a list
  std::string text;
  for (const std::string& e : events("/v1/completions", body))
    if (e != "[DONE]") text += json::parse(e)["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, want);
}

TEST_F(LlmServer, ConcurrentClientsGetWholeAnswers) {
  const std::vector<std::string> prompts = {"hello world", "the in a"};
  std::vector<std::string> want;
  for (const std::string& p : prompts) want.push_back(expected(tokenizer_->encode(p), 20));
  // Two clients at once, twice each, one of them streaming: no answer mixes in the other's tokens.
  std::vector<std::future<std::string>> answers;
  for (int round = 0; round < 2; round++)
    for (size_t i = 0; i < prompts.size(); i++)
      answers.push_back(std::async(std::launch::async, [&, i] {
        const json body = {{"prompt", prompts[i]}, {"max_tokens", 20}, {"temperature", 0}, {"stream", i == 1}};
        if (i == 0) return post("/v1/completions", body.dump()).second["choices"][0]["text"].get<std::string>();
        std::string text;
        for (const std::string& e : events("/v1/completions", body))
          if (e != "[DONE]") text += json::parse(e)["choices"][0]["text"].get<std::string>();
        return text;
      }));
  for (size_t k = 0; k < answers.size(); k++) EXPECT_EQ(answers[k].get(), want[k % 2]) << "request " << k;
}

TEST_F(LlmServer, BadRequestsAre400) {
  const std::string long_prompt(200, 'x');  // one token per letter: past the 48-token context
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"prompt\": \"hi\", ", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"{\"max_tokens\": 4}", "needs \"prompt\""},
      {"{\"prompt\": 5}", "\"prompt\" must be a string"},
      {"{\"prompt\": \"hi\", \"max_tokens\": 1.5}", "\"max_tokens\" must be an integer"},
      {"{\"prompt\": \"hi\", \"max_tokens\": -1}", "\"max_tokens\" must be >= 0"},
      {"{\"prompt\": \"hi\", \"temperature\": \"hot\"}", "\"temperature\" must be a number"},
      {"{\"prompt\": \"hi\", \"top_p\": 0}", "top_p must be in (0, 1]"},
      {"{\"prompt\": \"hi\", \"stop\": 3}", "\"stop\" must be a string or an array"},
      {"{\"prompt\": \"hi\", \"stream\": \"yes\"}", "\"stream\" must be true or false"},
      {"{\"prompt\": \"" + long_prompt + "\"}", "context holds 48"},
      {"{\"prompt\": \"" + long_prompt + "\", \"stream\": true}", "context holds 48"},
  };
  for (const auto& [body, message] : cases) {
    auto [status, answer] = post("/v1/completions", body);
    EXPECT_EQ(status, 400) << body;
    ASSERT_TRUE(answer.is_object()) << body;
    const std::string got = answer["error"]["message"].get<std::string>();
    EXPECT_NE(got.find(message), std::string::npos) << body << " -> " << got;
  }
  for (const std::string body : {R"({"messages": "hi"})", R"({"messages": [{"role": "user"}]})",
                                 R"({"messages": [{"role": "robot", "content": "hi"}]})"}) {
    auto [status, answer] = post("/v1/chat/completions", body);
    EXPECT_EQ(status, 400) << body;
    EXPECT_TRUE(answer["error"]["message"].is_string()) << body;
  }
  httplib::Result h = client().Get("/health");  // still serving
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST(LlmServerSetup, BusyPortIsAnError) {
  kt::TempDir dir("kiln_llm_server_port");
  kt::write_tiny_model(dir.dir, static_cast<int64_t>(kt::tiny_vocab().tokens.size()), kContext);
  Model model = Model::from_safetensors(dir.dir.string());
  const Tokenizer tokenizer = Tokenizer::from_vocab(kt::tiny_vocab());
  Server first(model, tokenizer, {.port = 0});
  try {
    Server second(model, tokenizer, {.port = first.port()});
    ADD_FAILURE() << "two servers on one port";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
              std::string::npos)
        << e.what();
  }
}

// ---- chat templates, against the strings the model families document

TEST(ChatTemplates, RenderDocumentedStrings) {
  const std::vector<ChatMessage> chat = {{"system", "You are a helpful assistant."},
                                         {"user", "Hello!"},
                                         {"assistant", "Hi there."},
                                         {"user", "How are you?"}};
  // Meta's LLaMA 2 chat format (the system prompt inside the first [INST]).
  EXPECT_EQ(render_chat(ChatTemplate::Llama2, chat),
            "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST] Hi there. </s>"
            "<s>[INST] How are you? [/INST]");
  // Meta's LLaMA 3 prompt format.
  EXPECT_EQ(render_chat(ChatTemplate::Llama3, chat),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHow are you?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // ChatML, as Qwen documents it.
  EXPECT_EQ(render_chat(ChatTemplate::ChatML, chat),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\nHi there.<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatTemplate::Llama2, {{"user", "  Hi  "}}), "<s>[INST] Hi [/INST]");
  EXPECT_THROW(render_chat(ChatTemplate::ChatML, {{"robot", "x"}}), kiln::Error);
  EXPECT_THROW(render_chat(ChatTemplate::Llama2, {{"user", "x"}, {"system", "y"}}), kiln::Error);
}

TEST(ChatTemplates, NamesAndDetection) {
  EXPECT_EQ(chat_template_named("llama3"), ChatTemplate::Llama3);
  EXPECT_THROW(chat_template_named("vicuna"), kiln::Error);
  // Excerpts of the Jinja templates the models ship.
  EXPECT_EQ(chat_template_detect("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"),
            ChatTemplate::Llama3);
  EXPECT_EQ(chat_template_detect("{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>'}}"),
            ChatTemplate::ChatML);
  EXPECT_EQ(chat_template_detect("{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"), ChatTemplate::Llama2);
  EXPECT_EQ(chat_template_detect("{{ '### Instruction:' }}"), std::nullopt);
}

// LLaMA 2 as Meta's reference code tokenizes a dialog: each turn pair is encode(text) between BOS and EOS,
// and text that spells <s> stays text.
TEST(ChatTemplates, Llama2TokensPutBosAndEosBetweenTurns) {
  const Tokenizer t = Tokenizer::from_vocab(kt::tiny_vocab());
  const auto enc = [&](const std::string& s) { return t.encode(s, false); };
  Ids want = {t.bos()};
  for (const Ids& part :
       {enc("[INST] hello [/INST]"), enc(" world "), Ids{t.eos(), t.bos()}, enc("[INST] <s>the [/INST]")})
    want.insert(want.end(), part.begin(), part.end());
  EXPECT_EQ(encode_chat(t, ChatTemplate::Llama2, {{"user", "hello"}, {"assistant", "world"}, {"user", "<s>the"}}),
            want);
}

// ---- TextStream: text that may begin a stop string is held back until it is known not to

TEST(TextStream, HoldsBackPossibleStopStrings) {
  const kiln::llm::TokenizerData d = kt::tiny_vocab();
  const Tokenizer t = Tokenizer::from_vocab(d);
  const auto id = [&](const std::string& s) {
    return static_cast<int32_t>(std::find(d.tokens.begin(), d.tokens.end(), s) - d.tokens.begin());
  };
  TextStream s(t, id("a"), {"wor", "lx"});
  EXPECT_EQ(s.push(id("in")), "in");
  EXPECT_EQ(s.push(id("w")), "");     // may start "wor"
  EXPECT_EQ(s.push(id("o")), "");     // still may
  EXPECT_EQ(s.push(id("a")), "woa");  // cannot any more
  EXPECT_EQ(s.push(id("l")), "");     // may start "lx"
  EXPECT_EQ(s.finish(), "l");         // generation ended: nothing to wait for
  TextStream u(t, id("a"), {"wor"});
  EXPECT_EQ(u.push(id("\xE2\x96\x81"
                      "the")),
            " the");  // after a token, a piece keeps its space
  EXPECT_EQ(u.push(id("w")), "");
  EXPECT_EQ(u.push(id("ld")), "wld");  // not "wor" after all
  EXPECT_FALSE(u.stopped());
  TextStream v(t, -1, {"or"});
  EXPECT_EQ(v.push(id("\xE2\x96\x81"
                      "the")),
            "the");                   // at the start of a text the space goes
  EXPECT_EQ(v.push(id("wor")), "w");  // the stop string inside a token: the text before it
  EXPECT_TRUE(v.stopped());
  EXPECT_EQ(v.push(id("a")), "");
  EXPECT_EQ(v.finish(), "");
}

// A character split over byte tokens comes out whole.
TEST(TextStream, HoldsBackIncompleteUtf8) {
  kiln::llm::TokenizerData d;
  d.model = "llama";
  for (const char* t : {"<unk>", "<s>", "</s>"}) d.tokens.push_back(t);
  d.token_types = {2, 3, 3};
  for (int b = 0; b < 256; b++) {
    char text[8];
    std::snprintf(text, sizeof text, "<0x%02X>", b);
    d.tokens.push_back(text);
    d.token_types.push_back(static_cast<int32_t>(kiln::llm::TokenType::Byte));
  }
  d.scores.assign(d.tokens.size(), 0.f);
  d.unknown_id = 0, d.bos_id = 1, d.eos_id = 2;
  const Tokenizer t = Tokenizer::from_vocab(d);
  const auto byte = [](unsigned char b) { return static_cast<int32_t>(3 + b); };
  TextStream s(t, byte('x'), {});
  EXPECT_EQ(s.push(byte(0xE2)), "");  // € is E2 82 AC
  EXPECT_EQ(s.push(byte(0x82)), "");
  EXPECT_EQ(s.push(byte(0xAC)), "\xE2\x82\xAC");
  EXPECT_EQ(s.push(byte('a')), "a");
  EXPECT_EQ(s.push(byte(0xC3)), "");
  EXPECT_EQ(s.finish(), "\xC3");  // at the end, whatever is left
}

}  // namespace
