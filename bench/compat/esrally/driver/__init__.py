"""``esrally.driver``: the runner base class track code subclasses."""
