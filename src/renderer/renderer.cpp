#include "renderer/renderer.h"

#include "kiln/error.h"

namespace kiln::renderer {

const Renderer& renderer_for(const std::string& language) {
  for (const Renderer* r : {&c_renderer(), &opencl_renderer(), &cuda_renderer()})
    if (r->language() == language) return *r;
  throw_error("no renderer for the kernel language '", language, "'; expected C, OpenCL or CUDA");
}

}  // namespace kiln::renderer
