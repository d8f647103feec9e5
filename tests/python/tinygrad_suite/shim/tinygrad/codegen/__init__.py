from tinygrad._internal import internal
to_program, full_rewrite_to_sink, line_rewrite = internal("to_program"), internal("full_rewrite_to_sink"), internal("line_rewrite")
pm_linearize_cleanups = None
