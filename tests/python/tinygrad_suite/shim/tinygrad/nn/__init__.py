from kiln.nn import *  # noqa: F401,F403
from kiln.nn import optim, state  # noqa: F401
from tinygrad._internal import missing
__getattr__ = missing(__name__)
