from kiln.nn.state import *  # noqa: F401,F403
from tinygrad._internal import missing
__getattr__ = missing(__name__)
