"""FastAPI application: a thin HTTP shell over `tracker`."""
