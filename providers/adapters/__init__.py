"""One module per provider, each defining a concrete `providers.contract.Provider` subclass.

Reach adapters through `providers.registry`, which lists every one of them explicitly;
`tests/providers/test_registry.py` checks that no adapter module is left out of it.
"""

# Empty on purpose: the registry, not this package, is the way in, and importing it must stay free of
# side effects (no adapter is imported until the registry asks for it).
__all__: list[str] = []
