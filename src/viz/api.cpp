#include "viz/api.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "uop/rewrite_trace.h"
#include "viz/run_log.h"
#include "viz/step_graphs.h"

namespace kiln::viz {
namespace {

using nlohmann::json;

// A rule's file as the project names it: the path from src/, include/, tests/ or examples/ on.
std::string project_path(const char* file) {
  std::string f = file ? file : "";
  size_t best = std::string::npos;
  for (const char* dir : {"/src/", "/include/", "/tests/", "/examples/"})
    if (size_t at = f.rfind(dir); at != std::string::npos && (best == std::string::npos || at > best)) best = at;
  return best == std::string::npos ? f : f.substr(best + 1);
}

// The rule's text: a few lines from where it was written, when the source is on this machine.
std::string source_lines(const char* file, int line, int count = 3) {
  std::ifstream in(file ? file : "");
  std::string text, l;
  for (int i = 1; i < line + count && std::getline(in, l); i++)
    if (i >= line) text += l + '\n';
  return text;
}

json node_json(const trace::Node& n) {
  return {{"op", std::string(op_name(n.op))}, {"dtype", n.dtype}, {"arg", n.arg}, {"shape", n.shape}, {"src", n.src}};
}

}  // namespace

std::string traces_json() {
  json groups = json::array();
  std::map<std::string, size_t> group_of;
  auto group = [&](const std::string& context) -> json& {
    auto [it, fresh] = group_of.emplace(context, groups.size());
    if (fresh) groups.push_back({{"context", context}, {"traces", json::array()}, {"kernels", json::array()}});
    return groups[it->second];
  };
  trace::visit([&](const std::vector<trace::Trace>& traces) {
    for (size_t i = 0; i < traces.size(); i++) {
      const trace::Trace& t = traces[i];
      group(t.context)["traces"].push_back({{"id", i}, {"name", t.name}, {"steps", t.steps.size()},
                                            {"nodes", t.nodes.size()}, {"depth", t.depth}, {"error", t.error}});
    }
  });
  visit_run_log([&](const std::vector<KernelSource>& kernels, const std::vector<ScheduleRun>&) {
    for (size_t i = 0; i < kernels.size(); i++)
      group(kernels[i].context)["kernels"].push_back({{"id", i}, {"name", kernels[i].name}});
  });
  return json{{"groups", groups}}.dump();
}

std::optional<std::string> trace_json(size_t id) {
  std::optional<trace::Trace> copy;  // rebuilt outside the store's lock
  trace::visit([&](const std::vector<trace::Trace>& traces) {
    if (id < traces.size()) copy = traces[id];
  });
  if (!copy) return std::nullopt;
  std::vector<trace::Node> nodes = copy->nodes;
  std::vector<int> roots = step_roots(*copy, nodes);
  json steps = json::array();
  for (const trace::Step& s : copy->steps)
    steps.push_back({{"before", s.before},
                     {"after", s.after},
                     {"file", project_path(s.where.file)},
                     {"line", s.where.line},
                     {"code", source_lines(s.where.file, s.where.line)}});
  json out_nodes = json::array();
  for (const trace::Node& n : nodes) out_nodes.push_back(node_json(n));
  return json{{"id", id},        {"name", copy->name},     {"context", copy->context}, {"error", copy->error},
              {"nodes", out_nodes}, {"roots", roots}, {"result", copy->result},   {"steps", steps}}
      .dump();
}

std::string kernels_json() {
  json out = json::array();
  visit_run_log([&](const std::vector<KernelSource>& kernels, const std::vector<ScheduleRun>&) {
    for (size_t i = 0; i < kernels.size(); i++)
      out.push_back({{"id", i},
                     {"name", kernels[i].name},
                     {"context", kernels[i].context},
                     {"source", kernels[i].source},
                     {"opts", kernels[i].opts}});
  });
  return out.dump();
}

std::string schedules_json() {
  json out = json::array();
  visit_run_log([&](const std::vector<KernelSource>&, const std::vector<ScheduleRun>& schedules) {
    for (size_t i = 0; i < schedules.size(); i++) {
      json launches = json::array();
      for (const Launch& l : schedules[i].launches) {
        json bufs = json::array();
        for (const BufferUse& b : l.buffers)
          bufs.push_back({{"id", b.id}, {"dtype", b.dtype}, {"size", b.size}, {"device", b.device}});
        launches.push_back({{"kernel", l.kernel},
                            {"kernel_id", l.kernel_id < 0 ? json(nullptr) : json(l.kernel_id)},
                            {"seconds", l.seconds},
                            {"buffers", bufs}});
      }
      out.push_back({{"id", i}, {"context", schedules[i].context}, {"launches", launches}});
    }
  });
  return out.dump();
}

}  // namespace kiln::viz
