// kiln-llm: run, benchmark or serve a LLaMA-family language model with kiln.
//   kiln-llm run MODEL -p "Once upon a time" -n 64
//   kiln-llm bench MODEL
//   kiln-llm serve MODEL --port 8080
// MODEL is a .gguf file, or a Hugging Face folder (config.json, safetensors, tokenizer.json).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>

#include "kiln/llm_bench.h"
#include "kiln/llm_load.h"
#include "kiln/llm_server.h"
#include "kiln/llm_text.h"

namespace {

using namespace kiln::llm;

struct Flags {
  std::string model, tokenizer, prompt, system, chat_template, host = "127.0.0.1";
  int max_tokens = 128, top_k = 40, port = 8080;
  float temperature = 0.8f, top_p = 0.95f, min_p = 0.05f, repeat_penalty = 1.f;
  uint64_t seed = 0;
  bool seeded = false, chat = false;
  int64_t prompt_tokens = 128, decode_tokens = 32;
};

// --chat-template, else the one the model's files name, else none.
std::optional<ChatTemplate> template_for(const Flags& f, const LoadedModel& m) {
  return f.chat_template.empty() ? m.chat_template : chat_template_named(f.chat_template);
}

int run(const Flags& f) {
  LoadedModel m = load_model(f.model, f.tokenizer);
  std::vector<std::string> stops;
  std::vector<int32_t> prompt;
  if (f.chat) {
    const std::optional<ChatTemplate> t = template_for(f, m);
    if (!t)
      throw kiln::Error(
          "the model's files name no chat template kiln knows; pass --chat-template llama2|llama3|chatml");
    std::vector<ChatMessage> messages;
    if (!f.system.empty()) messages.push_back({"system", f.system});
    messages.push_back({"user", f.prompt});
    prompt = encode_chat(m.tokenizer, *t, messages);
    stops = chat_stop_strings(*t);
  } else {
    prompt = m.tokenizer.encode(f.prompt);
  }
  const Sampling s{.temperature = f.temperature,
                   .top_k = f.top_k,
                   .top_p = f.top_p,
                   .min_p = f.min_p,
                   .repeat_penalty = f.repeat_penalty,
                   .seed = f.seeded ? f.seed : std::random_device{}()};
  if (!f.chat) std::fputs(f.prompt.c_str(), stdout);
  const TextGeneration g =
      generate_text(m.model, m.tokenizer, prompt, f.max_tokens, s, stops, [](const std::string& text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return true;
      });
  std::printf("\n");
  const int64_t decoded = g.completion_tokens - 1;  // the first new token came with the prompt's pass
  std::fprintf(stderr, "prompt: %lld tokens, %.2f tokens/s; generation: %lld tokens, %.2f tokens/s\n",
               static_cast<long long>(g.prompt_tokens), double(g.prompt_tokens) / g.prompt_seconds,
               static_cast<long long>(g.completion_tokens),
               decoded > 0 ? double(decoded) / (g.total_seconds - g.prompt_seconds) : 0.0);
  return 0;
}

int bench(const Flags& f) {
  LoadedModel m = load_model(f.model, f.tokenizer);
  const BenchResult r = kiln::llm::bench(m.model, f.prompt_tokens, f.decode_tokens);
  std::printf("prefill: %lld tokens, %.2f tokens/s\n", static_cast<long long>(r.prefill_tokens),
              r.prefill_tokens_per_s());
  std::printf("decode:  %lld tokens, %.2f tokens/s, %.2f GB/s (%.1f MB of weights per token)\n",
              static_cast<long long>(r.decode_tokens), r.decode_tokens_per_s(),
              double(m.decode_weight_bytes) * r.decode_tokens_per_s() / 1e9, double(m.decode_weight_bytes) / 1e6);
  return 0;
}

int serve(const Flags& f) {
  LoadedModel m = load_model(f.model, f.tokenizer);
  const std::optional<ChatTemplate> t = template_for(f, m);
  std::filesystem::path path(f.model);  // the model's name: the folder's, or the file's without .gguf
  if (!path.has_filename()) path = path.parent_path();
  const std::string name = (path.extension() == ".gguf" ? path.stem() : path.filename()).string();
  Server server(m.model, m.tokenizer, {.host = f.host, .port = f.port, .model_name = name, .chat_template = t});
  std::fprintf(stderr, "kiln-llm: serving %s on http://%s:%d%s (Ctrl-C to stop)\n", name.c_str(), f.host.c_str(),
               server.port(), t ? "" : "; no chat template, so only /v1/completions");
  server.listen();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Runs, benchmarks or serves a LLaMA-family language model with kiln."};
  app.require_subcommand(1);
  const auto model_flags = [&](CLI::App* cmd) {
    cmd->add_option("model", f.model, "A .gguf file, or a Hugging Face folder (config.json + *.safetensors)")
        ->required();
    cmd->add_option("--tokenizer", f.tokenizer,
                    "A GGUF file whose tokenizer.ggml.* metadata is the vocabulary "
                    "(instead of the model's own; needed for a folder without tokenizer.json)");
  };
  CLI::App* run_cmd = app.add_subcommand("run", "Generate text after a prompt, streamed as it is made");
  model_flags(run_cmd);
  run_cmd->add_option("-p,--prompt", f.prompt, "The prompt")->required();
  run_cmd->add_option("-n,--max-tokens", f.max_tokens, "Tokens to generate at most")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  run_cmd->add_option("--temp", f.temperature, "Temperature (0: greedy)")
      ->check(CLI::Range(0.f, 100.f))
      ->capture_default_str();
  run_cmd->add_option("--top-k", f.top_k, "Keep the k most likely tokens (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run_cmd->add_option("--top-p", f.top_p, "Keep the most likely tokens holding this much probability")
      ->check(CLI::Range(0.f, 1.f))
      ->capture_default_str();
  run_cmd->add_option("--min-p", f.min_p, "Drop tokens less likely than this times the most likely one")
      ->check(CLI::Range(0.f, 1.f))
      ->capture_default_str();
  run_cmd->add_option("--repeat-penalty", f.repeat_penalty, "Divide the logits of tokens already seen (1: off)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  run_cmd->add_option("--seed", f.seed, "Sampling seed (default: random)")->each([&](const std::string&) {
    f.seeded = true;
  });
  run_cmd->add_flag("--chat", f.chat, "Wrap the prompt in the model's chat template as a user message");
  run_cmd->add_option("--system", f.system, "With --chat: a system message first");
  CLI::App* bench_cmd = app.add_subcommand("bench", "Measure prefill and decode speed");
  model_flags(bench_cmd);
  bench_cmd->add_option("--prompt-tokens", f.prompt_tokens, "Prompt length")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bench_cmd->add_option("--decode-tokens", f.decode_tokens, "Decode steps")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI::App* serve_cmd = app.add_subcommand("serve", "Serve OpenAI's completion API over HTTP");
  model_flags(serve_cmd);
  serve_cmd->add_option("--host", f.host, "Address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", f.port, "Port (0: any free one)")->check(CLI::Range(0, 65535))->capture_default_str();
  for (CLI::App* cmd : {run_cmd, serve_cmd})
    cmd->add_option("--chat-template", f.chat_template, "llama2, llama3 or chatml (default: the one the model names)")
        ->check(CLI::IsMember({"llama2", "llama3", "chatml"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (run_cmd->parsed()) return run(f);
    if (bench_cmd->parsed()) return bench(f);
    return serve(f);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-llm: error: %s\n", e.what());
    return 1;
  }
}
