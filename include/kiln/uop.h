#pragma once
// kiln's IR, public for compiler researchers: build UOps by hand, write patterns, run graph_rewrite,
// and inspect any Tensor's graph (tensor.uop()). See examples/custom_rule.cpp.
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/ir/ops.h"
#include "kiln/ir/pattern_matcher.h"
#include "kiln/ir/symbolic.h"
#include "kiln/ir/uop.h"
#include "kiln/ir/spec.h"
