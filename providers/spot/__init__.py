"""Interruption data for spot / interruptible capacity, from the providers that publish it.

Not offer adapters (they list no prices): sources the cost model (`tracker.costs`) reads to put a rate
on the chance a spot run is interrupted. Like every module of `providers/`, they import nothing of ours.
"""
