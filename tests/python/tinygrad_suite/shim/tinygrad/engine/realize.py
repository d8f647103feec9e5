from tinygrad._internal import internal
run_linear, compile_linear = internal("run_linear"), internal("compile_linear")
