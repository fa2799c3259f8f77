"""Sweeps: a grid of derived variants planned, run, benchmarked and resumed.

Pure: :mod:`model`, :mod:`grid`, :mod:`plan`, :mod:`history`, :mod:`stoprules`.
Effectful: :mod:`state` (the state file), :mod:`executor` (launch, bench, stop).
"""
