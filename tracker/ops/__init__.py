"""Operations: provider health (`status`) and the Prometheus collector read from the database (`metrics`)."""

__all__ = ["metrics", "status"]
