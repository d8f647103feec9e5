"""What tinygrad keeps outside its core package, in `extra/`: `from extra.lr_scheduler import ...`
becomes `from kiln.extra.lr_scheduler import ...`."""
