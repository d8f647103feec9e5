// VIZ: what graph_rewrite and the stages record, the graphs rebuilt for each step, the JSON the
// page reads, and the server itself (a child process run with VIZ=1, asked over HTTP).
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <set>

#include "error_message.h"
#include "kiln/kiln.h"
#include "kiln/uop.h"
#include "subprocess.h"
#include "uop/rewrite_trace.h"
#include "viz/api.h"
#include "viz/run_log.h"
#include "viz/server.h"
#include "viz/step_graphs.h"

using namespace kiln;
using nlohmann::json;

namespace {

// Records for the test's lifetime, starting from nothing.
struct Recording {
  Recording() {
    trace::clear();
    viz::clear_run_log();
    trace::set_enabled(true);
  }
  ~Recording() { trace::set_enabled(false); }
  std::vector<trace::Trace> traces() const {
    std::vector<trace::Trace> out;
    trace::visit([&](const std::vector<trace::Trace>& t) { out = t; });
    return out;
  }
};

UOpRef idx(int64_t v) { return UOp::const_int(dtypes::index, v); }
UOpRef range(int64_t id, int64_t n) { return UOp::make(Ops::RANGE, dtypes::index, {idx(n)}, RangeArg{id, AxisType::LOOP}); }

const int kRuleLine = __LINE__ + 3;  // the line of the rule below
const PatternMatcher& add_zero() {
  static const PatternMatcher pm{{
      make_rule(UPat::var("x") + UPat::cconst(0), [](RewriteCtx*, const Match& m) { return m["x"]; }),
  }};
  return pm;
}

}  // namespace

TEST(VizRecording, NamedRewritesRecordEachStepWithItsRule) {
  Recording rec;
  UOpRef r = range(0, 16);
  UOpRef e = (r + idx(0)) * 2 + idx(0);
  UOpRef out = graph_rewrite(e, add_zero(), {.name = "drop zeros"});
  EXPECT_EQ(out, r * 2);
  auto traces = rec.traces();
  ASSERT_EQ(traces.size(), 1u);
  const trace::Trace& t = traces[0];
  EXPECT_EQ(t.name, "drop zeros");
  ASSERT_EQ(t.steps.size(), 2u);
  for (const trace::Step& s : t.steps) {
    EXPECT_TRUE(std::string(s.where.file).ends_with("test_viz.cpp"));
    EXPECT_EQ(s.where.line, kRuleLine);
    EXPECT_EQ(t.nodes[s.before].op, Ops::ADD);
  }
  EXPECT_EQ(t.nodes[t.steps[0].after].op, Ops::RANGE);
  EXPECT_EQ(t.nodes[t.result].op, Ops::MUL);
  EXPECT_TRUE(t.error.empty());
}

TEST(VizRecording, UnnamedRewritesAndRecordingOffLeaveNothing) {
  {
    Recording rec;
    graph_rewrite(range(0, 4) + idx(0), add_zero());  // unnamed: index math is not worth a trace
    simplify(range(0, 4) + idx(0));
    EXPECT_TRUE(rec.traces().empty());
  }
  trace::clear();
  graph_rewrite(range(0, 4) + idx(0), add_zero(), {.name = "off"});
  size_t stored = 1;
  trace::visit([&](const std::vector<trace::Trace>& t) { stored = t.size(); });
  EXPECT_EQ(stored, 0u);
}

TEST(VizRecording, ContextsNestAndNameTheTrace) {
  Recording rec;
  {
    trace::Context outer("schedule 1");
    trace::Context inner([] { return std::string("kernel r_4"); });
    EXPECT_EQ(trace::current_context(), "schedule 1 / kernel r_4");
    graph_rewrite(range(0, 4) + idx(0), add_zero(), {.name = "in kernel"});
  }
  EXPECT_EQ(trace::current_context(), "");
  auto traces = rec.traces();
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].context, "schedule 1 / kernel r_4");
}

TEST(VizRecording, ARewriteThatThrowsKeepsItsStepsAndSaysSo) {
  Recording rec;
  PatternMatcher fails = add_zero() + PatternMatcher{{make_rule(UPat(Ops::MUL), [](RewriteCtx*, const Match&) -> UOpRef {
                           throw Error("no rule for this MUL");
                         })}};
  EXPECT_THROW(graph_rewrite((range(0, 4) + idx(0)) * 3, fails, {.name = "fails"}), Error);
  auto traces = rec.traces();
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].result, -1);
  EXPECT_EQ(traces[0].steps.size(), 1u);  // the ADD dropped before the MUL threw
  EXPECT_NE(traces[0].error.find("threw"), std::string::npos);
}

// The graph rebuilt after the last step is the rewrite's result: the page shows what ran.
TEST(VizStepGraphs, TheLastStepsGraphIsTheResult) {
  Recording rec;
  UOpRef a = range(0, 16), b = range(1, 8);
  UOpRef e = ((a * 8 + b) / 8 + idx(0)) * 1 + ((a * 8 + b) % 8) * idx(0);
  UOpRef out = simplify(e, "simplify for test");
  auto traces = rec.traces();
  ASSERT_EQ(traces.size(), 1u);
  const trace::Trace& t = traces[0];
  EXPECT_GT(t.steps.size(), 2u);
  std::vector<trace::Node> nodes = t.nodes;
  std::vector<int> roots = viz::step_roots(t, nodes);
  ASSERT_EQ(roots.size(), t.steps.size() + 1);
  EXPECT_EQ(roots.front(), t.root);
  EXPECT_EQ(roots.back(), t.result);
  EXPECT_EQ(out, a);
}

// A real program: every stage leaves traces under its schedule/kernel context, every rebuilt final
// graph matches its result, and kernels and schedules are logged with the traces' contexts.
TEST(VizStepGraphs, EveryTraceOfATrainingStepRebuildsToItsResult) {
  Recording rec;
  Tensor x = Tensor::randn({8, 4}), w = Tensor::randn({4, 3}).requires_grad_();
  Tensor loss = x.matmul(w).relu().sum();
  loss.backward();
  Tensor::realize({loss, *w.grad()});
  auto traces = rec.traces();
  std::set<std::string> names;
  for (const trace::Trace& t : traces) {
    names.insert(t.name.substr(0, t.name.find(' ')));
    ASSERT_TRUE(t.error.empty()) << t.name;
    std::vector<trace::Node> nodes = t.nodes;
    EXPECT_EQ(viz::step_roots(t, nodes).back(), t.result) << t.name << " in " << t.context;
  }
  for (const char* stage : {"backward", "drop", "rangeify", "kernels", "simplify", "opts", "expand", "lower"})
    EXPECT_TRUE(names.count(stage)) << stage;

  json groups = json::parse(viz::traces_json())["groups"];
  json kernels = json::parse(viz::kernels_json());
  json schedules = json::parse(viz::schedules_json());
  ASSERT_FALSE(kernels.empty());
  ASSERT_FALSE(schedules.empty());
  for (const json& k : kernels) {
    EXPECT_NE(k["source"].get<std::string>().find(k["name"].get<std::string>()), std::string::npos);
    const std::string context = k["context"];
    EXPECT_TRUE(context.starts_with("schedule ") && context.find(" / kernel ") != std::string::npos) << context;
    // a kernel's group also holds its codegen rewrites
    bool grouped = false;
    for (const json& g : groups)
      if (g["context"] == k["context"]) grouped = !g["traces"].empty() && !g["kernels"].empty();
    EXPECT_TRUE(grouped) << k["context"];
  }
  for (const json& l : schedules.back()["launches"]) {
    EXPECT_FALSE(l["buffers"].empty());
    EXPECT_GE(l["seconds"].get<double>(), 0);
    EXPECT_EQ(kernels[l["kernel_id"].get<size_t>()]["name"], l["kernel"]);
  }
}

TEST(VizApi, OneTraceHasNodesRootsAndRules) {
  Recording rec;
  graph_rewrite((range(0, 4) + idx(0)) * 3, add_zero(), {.name = "api"});
  json t = json::parse(*viz::trace_json(0));
  EXPECT_EQ(t["name"], "api");
  ASSERT_EQ(t["steps"].size(), 1u);
  EXPECT_EQ(t["roots"].size(), 2u);
  EXPECT_EQ(t["steps"][0]["file"], "tests/test_viz.cpp");
  EXPECT_EQ(t["steps"][0]["line"], kRuleLine);
  EXPECT_NE(t["steps"][0]["code"].get<std::string>().find("cconst(0)"), std::string::npos);
  for (const json& n : t["nodes"]) {
    EXPECT_TRUE(n.contains("op") && n.contains("dtype") && n.contains("arg") && n.contains("src"));
    for (int s : n["src"]) EXPECT_LT(s, static_cast<int>(t["nodes"].size()));
  }
  EXPECT_FALSE(viz::trace_json(1).has_value());
}

TEST(VizServer, PortsAreCheckedWithAClearMessage) {
  EXPECT_EQ(viz::parse_port("8123"), 8123);
  for (const char* bad : {"abc", "0", "65536", "80x", "-1", ""})
    EXPECT_NE(kt::error_of([&] { viz::parse_port(bad); }).find(std::string("got '") + bad + "'"), std::string::npos);
}

// The demo program under VIZ=1 serves at exit: the page, its scripts and the API answer.
TEST(VizServer, ServesThePageAndTheApiAtExit) {
  const int port = kt::free_port();
  kt::Subprocess demo(KILN_VIZ_DEMO, {{"VIZ", "1"}, {"VIZ_PORT", std::to_string(port)}});
  std::string err = demo.read_until("VIZ: serving", 120);
  ASSERT_NE(err.find("VIZ: serving http://127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
  httplib::Client cli("127.0.0.1", port);
  auto page = cli.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("kiln VIZ"), std::string::npos);
  for (const char* asset : {"/js/app.js", "/js/layout_worker.js", "/vendor/dagre.min.js", "/viz.css"}) {
    auto r = cli.Get(asset);
    ASSERT_TRUE(r) << asset;
    EXPECT_EQ(r->status, 200) << asset;
  }
  json groups = json::parse(cli.Get("/api/traces")->body)["groups"];
  EXPECT_GT(groups.size(), 2u);
  EXPECT_FALSE(json::parse(cli.Get("/api/trace/0")->body)["nodes"].empty());
  EXPECT_EQ(cli.Get("/api/trace/999999")->status, 404);
  EXPECT_EQ(cli.Get("/api/trace/99999999999999999999999999")->status, 404);  // past size_t: not a 500
  EXPECT_FALSE(json::parse(cli.Get("/api/kernels")->body).empty());
  EXPECT_FALSE(json::parse(cli.Get("/api/schedule")->body).empty());
}

TEST(VizServer, ABusyPortIsAnErrorNamingIt) {
  const int port = kt::free_port();
  kt::Subprocess first(KILN_VIZ_DEMO, {{"VIZ", "1"}, {"VIZ_PORT", std::to_string(port)}});
  ASSERT_NE(first.read_until("VIZ: serving", 120).find("serving"), std::string::npos);
  kt::Subprocess second(KILN_VIZ_DEMO, {{"VIZ", "1"}, {"VIZ_PORT", std::to_string(port)}});
  std::string err = second.read_until("in use", 120);
  EXPECT_NE(err.find("cannot listen on 127.0.0.1:" + std::to_string(port) + " (VIZ_PORT): the port is in use"),
            std::string::npos)
      << err;
  EXPECT_EQ(second.wait(), 0);  // the program's work was done: only serving failed
}
