from tinygrad._internal import Internal
class PythonRenderer(Internal): pass
