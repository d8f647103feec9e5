#pragma once
// kiln: one header for the whole public API.
#include "kiln/counters.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/jit.h"
#include "kiln/nn/datasets.h"
#include "kiln/nn/layers.h"
#include "kiln/nn/optim.h"
#include "kiln/nn/state.h"
#include "kiln/schedule_item.h"
#include "kiln/tensor.h"
#include "kiln/uop.h"
