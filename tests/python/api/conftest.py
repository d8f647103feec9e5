"""pytest setup for the kiln package's tests. Tests comparing against PyTorch skip their module when
torch is missing; the run then exits 77, which ctest reports as skipped (the C++ reference tests do
the same)."""
import importlib.util

HAVE_TORCH = importlib.util.find_spec("torch") is not None

def pytest_sessionfinish(session, exitstatus):
  if not HAVE_TORCH and exitstatus == 0: session.exitstatus = 77
