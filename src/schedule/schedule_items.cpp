// The public view of a schedule: one ScheduleItem per CALL of the LINEAR.
#include <algorithm>
#include <sstream>

#include "kiln/ir/pattern_matcher.h"
#include "schedule/schedule.h"

namespace kiln {

std::string ScheduleItem::str() const {
  std::ostringstream os;
  os << name << "  buffers:";
  for (size_t i = 0; i < buffers.size(); i++)
    os << " " << i << ":" << buffers[i]->dtype.name() << "[" << buffers[i]->arg_as<BufferArg>().size << "]";
  os << "\n" << print_graph(ast);
  return os.str();
}

namespace schedule {

std::string kernel_name(const UOpRef& kernel_sink) {
  std::vector<const UOp*> ranges;
  for (const UOp* u : kernel_sink->toposort())
    if (u->op == Ops::RANGE) ranges.push_back(u);
  std::sort(ranges.begin(), ranges.end(), [](const UOp* a, const UOp* b) {
    return a->arg_as<RangeArg>().id < b->arg_as<RangeArg>().id;
  });
  bool reduces = false;
  std::string sizes;
  for (const UOp* r : ranges) {
    reduces |= r->arg_as<RangeArg>().type == AxisType::REDUCE;
    sizes += "_" + std::to_string(static_cast<int64_t>(r->src[0]->const_value()));
  }
  return (reduces ? "r" : "E") + (sizes.empty() ? std::string("_1") : sizes);
}

std::vector<ScheduleItem> schedule_items(const UOpRef& linear) {
  std::vector<ScheduleItem> items;
  for (const UOpRef& call : linear->src) {
    ScheduleItem item{kernel_name(call->src[0]), call->src[0], {}};
    item.buffers.assign(call->src.begin() + 1, call->src.end());
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace schedule
}  // namespace kiln
