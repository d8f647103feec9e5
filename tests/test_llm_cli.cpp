// The kiln-llm tool (tools/kiln-llm) as a user runs it, on a tiny random model written as a Hugging
// Face folder with a vocab-only GGUF tokenizer: `run` prints the prompt and what Model::generate makes
// of it (greedy), then a line of speeds; `bench` prints its speeds; `serve` answers over HTTP; bad flags
// exit 2, missing files 1, each with a message saying what is wrong.
#include <gtest/gtest.h>
#include <httplib.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "kiln/llm_chat.h"
#include "llm_fixture.h"

namespace {

using kiln::llm::Model;
using kiln::llm::Tokenizer;

struct Ran {
  int code = -1;
  std::string out, err;
};

std::string read_file(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

// Starts kiln-llm with `args`, its stdout and stderr going to files under `dir`. Everything the child
// needs is made before fork: between fork and exec only async-signal-safe calls (kiln's threads may hold locks).
pid_t start(const std::vector<std::string>& args, const kt::TempDir& dir) {
  std::vector<char*> argv = {const_cast<char*>(KILN_LLM_CLI)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int out = open((dir / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open((dir / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const pid_t pid = fork();
  if (pid == 0) {
    if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(126);
    execv(KILN_LLM_CLI, argv.data());
    _exit(127);
  }
  close(out);
  close(err);
  return pid;
}

Ran run(const std::vector<std::string>& args, const kt::TempDir& dir) {
  int status = 0;
  waitpid(start(args, dir), &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(dir / "out"), read_file(dir / "err")};
}

class LlmCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directory(folder_);
    kt::write_tiny_model(folder_, static_cast<int64_t>(kt::tiny_vocab().tokens.size()), 128);
    kt::write_vocab_gguf(kt::tiny_vocab(), vocab_);
  }
  kt::TempDir temp_{"kiln_llm_cli"};
  const std::string folder_ = temp_ / "model", vocab_ = temp_ / "vocab.gguf";
};

// `d` (SentencePiece-style) as a Hugging Face tokenizer.json: every split of a piece into two pieces a merge,
// ranked by the piece's score, "▁" for spaces by the normalizer.
void write_tokenizer_json(const kiln::llm::TokenizerData& d, const std::filesystem::path& dir) {
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  std::vector<std::pair<float, std::string>> merges;
  for (size_t i = 0; i < d.tokens.size(); i++) {
    const std::string& t = d.tokens[i];
    vocab[t] = i;
    if (d.token_types[i] != static_cast<int32_t>(kiln::llm::TokenType::Normal)) {
      added.push_back({{"id", i}, {"content", t}, {"special", true}});
      continue;
    }
    for (size_t k = 1; k < t.size(); k++)
      if (std::count(d.tokens.begin(), d.tokens.end(), t.substr(0, k)) && std::count(d.tokens.begin(), d.tokens.end(), t.substr(k)))
        merges.push_back({d.scores[i], t.substr(0, k) + " " + t.substr(k)});
  }
  std::stable_sort(merges.begin(), merges.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  nlohmann::json merge_texts = nlohmann::json::array();
  for (const auto& m : merges) merge_texts.push_back(m.second);
  const nlohmann::json normalizer = {
      {"type", "Sequence"},
      {"normalizers", {{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}}}};
  std::ofstream(dir / "tokenizer.json") << nlohmann::json{
      {"added_tokens", added},
      {"normalizer", normalizer},
      {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"vocab", vocab}, {"merges", merge_texts}}}};
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": true})";
}

TEST_F(LlmCli, FolderWithTokenizerJsonRunsAsWithItsGgufVocabulary) {
  write_tokenizer_json(kt::tiny_vocab(), folder_);
  const Ran with_gguf = run({"run", folder_, "--tokenizer", vocab_, "-p", "hello the world", "-n", "8", "--temp", "0"}, temp_);
  ASSERT_EQ(with_gguf.code, 0) << with_gguf.err;
  const Ran with_json = run({"run", folder_, "-p", "hello the world", "-n", "8", "--temp", "0"}, temp_);
  ASSERT_EQ(with_json.code, 0) << with_json.err;
  EXPECT_EQ(with_json.out, with_gguf.out);
  const std::string prompt_line = "prompt: " + std::to_string(Tokenizer::from_vocab(kt::tiny_vocab()).encode("hello the world").size()) + " tokens, ";
  EXPECT_NE(with_json.err.find(prompt_line), std::string::npos) << with_json.err;
}

TEST_F(LlmCli, RunPrintsGenerateText) {
  Model model = Model::from_safetensors(folder_);
  const Tokenizer tokenizer = Tokenizer::from_vocab(kt::tiny_vocab());
  const std::vector<int32_t> prompt = tokenizer.encode("hello world");
  const std::string want = "hello world" + kt::continuation(tokenizer, prompt, model.generate(prompt, 12)) + "\n";
  const Ran r = run({"run", folder_, "--tokenizer", vocab_, "-p", "hello world", "-n", "12", "--temp", "0"}, temp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, want);
  EXPECT_NE(r.err.find("prompt: " + std::to_string(prompt.size()) + " tokens, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tokens/s; generation: "), std::string::npos) << r.err;
  // --chat wraps the prompt in the template the flag names
  const std::vector<int32_t> chat =
      kiln::llm::encode_chat(tokenizer, kiln::llm::ChatTemplate::Llama2, {{"user", "the world"}});
  const Ran c = run({"run", folder_, "--tokenizer", vocab_, "-p", "the world", "-n", "6", "--temp", "0", "--chat",
                     "--chat-template", "llama2"},
                    temp_);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out, kt::continuation(tokenizer, chat, model.generate(chat, 6)) + "\n");
  // without the flag, the template the tokenizer's file names (an excerpt of Qwen's Jinja template)
  const std::string chatml_vocab = temp_ / "chatml.gguf";
  kt::write_vocab_gguf(kt::tiny_vocab(), chatml_vocab, "{{'<|im_start|>' + message['role'] + '\\n'}}");
  const std::vector<int32_t> chatml = kiln::llm::encode_chat(tokenizer, kiln::llm::ChatTemplate::ChatML,
                                                             {{"system", "be brief"}, {"user", "the world"}});
  const Ran m = run({"run", folder_, "--tokenizer", chatml_vocab, "-p", "the world", "--system", "be brief", "-n", "6",
                     "--temp", "0", "--chat"},
                    temp_);
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_EQ(m.out, kt::continuation(tokenizer, chatml, model.generate(chatml, 6)) + "\n");
}

// A GGUF file holds the model, its vocabulary and its chat template.
TEST_F(LlmCli, RunsAGgufFile) {
  const std::string gguf = temp_ / "tiny.gguf";
  kt::write_tiny_gguf(gguf, kt::tiny_vocab(), 128, "{% for m in messages %}{{ '<|start_header_id|>' }}{% endfor %}");
  Model model = Model::from_gguf(gguf);
  const Tokenizer tokenizer = Tokenizer::from_gguf(gguf);
  const std::vector<int32_t> prompt = tokenizer.encode("hello world");
  Ran r = run({"run", gguf, "-p", "hello world", "-n", "10", "--temp", "0"}, temp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "hello world" + kt::continuation(tokenizer, prompt, model.generate(prompt, 10)) + "\n");
  const std::vector<int32_t> chat =
      kiln::llm::encode_chat(tokenizer, kiln::llm::ChatTemplate::Llama3, {{"user", "hi"}});
  r = run({"run", gguf, "-p", "hi", "-n", "5", "--temp", "0", "--chat"}, temp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kt::continuation(tokenizer, chat, model.generate(chat, 5)) + "\n");
  // float16 weights, all but the embedding table
  const int64_t vocab = static_cast<int64_t>(kt::tiny_vocab().tokens.size());
  const int64_t params = 2 * (16 + 16 + 16 * 16 + 8 * 16 * 2 + 16 * 16 + 3 * 24 * 16) + 16 + vocab * 16;
  r = run({"bench", gguf, "--prompt-tokens", "8", "--decode-tokens", "4"}, temp_);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ostringstream mb;
  mb.precision(1);
  mb << std::fixed << double(params * 2) / 1e6 << " MB of weights per token";
  EXPECT_NE(r.out.find(mb.str()), std::string::npos) << r.out;
}

TEST_F(LlmCli, BenchPrintsSpeeds) {
  const Ran r = run({"bench", folder_, "--tokenizer", vocab_, "--prompt-tokens", "8", "--decode-tokens", "4"}, temp_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("prefill: 8 tokens, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decode:  4 tokens, "), std::string::npos) << r.out;
  // Weights a decode step reads: everything but the embedding table, float32.
  const int64_t vocab = static_cast<int64_t>(kt::tiny_vocab().tokens.size());
  const int64_t params = 2 * (16 + 16 + 16 * 16 + 8 * 16 * 2 + 16 * 16 + 3 * 24 * 16) + 16 + vocab * 16;
  std::ostringstream mb;
  mb.precision(1);
  mb << std::fixed << double(params * 4) / 1e6 << " MB of weights per token";
  EXPECT_NE(r.out.find("GB/s (" + mb.str() + ")"), std::string::npos) << r.out;
}

TEST_F(LlmCli, ServeAnswersOverHttp) {
  struct Stopped {  // the server goes when the test ends, failed or not
    pid_t pid;
    ~Stopped() {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  } server{start({"serve", folder_, "--tokenizer", vocab_, "--port", "0", "--chat-template", "chatml"}, temp_)};
  std::string err;
  int port = 0;
  for (int i = 0; i < 600 && !port; i++) {  // up to a minute for the model to load
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    err = read_file(temp_ / "err");
    const size_t at = err.find("http://127.0.0.1:");
    if (at != std::string::npos && err.find(' ', at) != std::string::npos) port = std::stoi(err.substr(at + 17));
  }
  ASSERT_GT(port, 0) << err;
  EXPECT_NE(err.find("serving model on"), std::string::npos) << err;
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60, 0);
  httplib::Result r =
      client.Post("/v1/completions", R"({"prompt": "hello", "max_tokens": 3, "temperature": 0})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(nlohmann::json::parse(r->body)["model"], "model");
}

TEST_F(LlmCli, BadFlagsExit2MissingFilesExit1) {
  Ran r = run({"run", folder_, "-p", "hi", "--bogus"}, temp_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  r = run({"run", folder_, "-p", "hi", "--temp", "warm"}, temp_);
  EXPECT_EQ(r.code, 2);
  r = run({"run", folder_}, temp_);  // no prompt
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--prompt"), std::string::npos) << r.err;
  r = run({"serve", folder_, "--chat-template", "vicuna"}, temp_);
  EXPECT_EQ(r.code, 2);
  r = run({}, temp_);
  EXPECT_EQ(r.code, 2);
  r = run({"run", temp_ / "nowhere.gguf", "-p", "hi"}, temp_);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("nowhere.gguf\" does not exist"), std::string::npos) << r.err;
  r = run({"run", folder_, "-p", "hi"}, temp_);  // a folder without tokenizer.json needs --tokenizer
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("has no tokenizer.json"), std::string::npos) << r.err;
  r = run({"bench", folder_, "--tokenizer", temp_ / "missing.gguf"}, temp_);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("missing.gguf\" is not a file"), std::string::npos) << r.err;
  r = run({"run", folder_, "--tokenizer", vocab_, "-p", "hi", "--chat"}, temp_);  // no template named anywhere
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--chat-template"), std::string::npos) << r.err;
}

}  // namespace
