"""Reads a results file of bench/run.sh (`key value` lines): numbers as floats, notes (one word, e.g.
openblas_core) as strings."""


def read_figures(path):
    figures = {}
    for line in open(path):
        key, value = line.split()
        try:
            figures[key] = float(value)
        except ValueError:
            figures[key] = value
    return figures
