__version__ = "0.1.0"


def stamp(*, jax_version: bool = True) -> dict:
    """What fluidcc's outputs record of how they were made: ``fluidcc_version``, ``jax_version``
    (unless `jax_version` is False) and ``created``, the UTC time to the second (ISO 8601)."""
    import datetime

    made = {"fluidcc_version": __version__}
    if jax_version:
        import jax

        made["jax_version"] = jax.__version__
    made["created"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return made
