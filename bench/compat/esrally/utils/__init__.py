"""``esrally.utils``: the helpers track code reaches through Rally's parameter-source module."""
