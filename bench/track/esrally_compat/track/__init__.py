"""``esrally.track``: the loader's track-processor API and the parameter-source base class."""
