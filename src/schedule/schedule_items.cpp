// The public view of a schedule: one ScheduleItem per CALL of the LINEAR.
#include <algorithm>
#include <sstream>

#include "kiln/ir/pattern_matcher.h"
#include "schedule/schedule.h"

namespace kiln {

std::string ScheduleItem::str() const {
  std::ostringstream os;
  os << name << "  buffers:";
  for (size_t i = 0; i < buffers.size(); i++) {
    const BufferArg& b = buffers[i]->arg_as<BufferArg>();
    os << " " << i << ":" << buffers[i]->dtype.name() << "[" << b.size << "]";
    if (is_copy()) os << "@" << b.device;
  }
  if (!is_copy()) os << "\n" << print_graph(ast);
  return os.str();
}

namespace schedule {

std::string copy_name(const UOp& dst, const UOp& src) {
  const size_t bytes = static_cast<size_t>(dst.arg_as<BufferArg>().size) * dst.dtype.itemsize();
  return "copy " + std::to_string(bytes) + ", " + dst.arg_as<BufferArg>().device + " <- " + src.arg_as<BufferArg>().device;
}

std::vector<ScheduleItem> schedule_items(const UOpRef& linear) {
  std::vector<ScheduleItem> items;
  for (const UOpRef& call : linear->src) {
    const UOpRef& ast = call->src[0];
    ScheduleItem item{ast->op == Ops::COPY ? copy_name(*call->src[1], *call->src[2]) : kernel_name(ast), ast, {}};
    item.buffers.assign(call->src.begin() + 1, call->src.end());
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace schedule
}  // namespace kiln
