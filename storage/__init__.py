"""Postgres through SQLAlchemy 2: models, repositories, job queue, change log
(to come with the pipeline issue). Takes a database URL; reads no settings."""
