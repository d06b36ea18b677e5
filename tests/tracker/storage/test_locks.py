"""Provider locks: many held at once (on Postgres on one connection), each excluding a second holder
until the block exits; a provider held elsewhere is left out, not waited for."""

from __future__ import annotations

import pytest

from tracker.storage.locks import provider_lock, provider_locks


def test_several_providers_are_locked_together_and_released_together(engine):
    with provider_locks(engine, ["vastai", "aws", "vastai"]) as got:  # a repeated name is one lock
        assert got == {"vastai", "aws"}
        with provider_lock(engine, "aws") as again:
            assert not again
        with provider_lock(engine, "lambdalabs") as other:
            assert other
    with provider_lock(engine, "aws") as free:
        assert free


def test_a_provider_held_elsewhere_is_left_out(engine):
    with provider_lock(engine, "vastai") as held:
        assert held
        with provider_locks(engine, ["vastai", "aws"]) as got:
            assert got == {"aws"}
    with provider_locks(engine, []) as none:
        assert none == set()


def test_on_postgres_all_the_locks_share_one_connection(engine):
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite's locks are process-local: no connection at all")
    before = engine.pool.checkedout()  # type: ignore[attr-defined]
    with provider_locks(engine, [f"p{i}" for i in range(50)]) as got:
        assert len(got) == 50
        assert engine.pool.checkedout() == before + 1  # type: ignore[attr-defined]
