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
