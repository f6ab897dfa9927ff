"""tandem: GPU computation and NCCL collectives run in tandem.

This package needs neither a GPU nor PyTorch: it parses policies with tandem's own parser (its
one-line messages, raised as ValueError). The controls inside PyTorch are in ``tandem.torch``.

    >>> import tandem
    >>> p = tandem.parse_policy("priority+nccl-ctas:8")
    >>> p.comm_priority, p.nccl_config
    (True, {'minCTAs': 8, 'maxCTAs': 8})
"""
import os

from tandem import _core
from tandem._core import Policy, __version__, policy_help

__all__ = ["Policy", "__version__", "as_policy", "load_policy_file", "parse_policy", "policy_help"]


def _utf8(value, what):
    """``value``, or ValueError naming its first character UTF-8 cannot encode (a lone surrogate: no text holds
    one, and tandem's parser takes UTF-8). What is not a ``str`` is left to the parser's own TypeError."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            shown = value.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
            shown = shown if len(shown) <= 200 else shown[:200] + "..."
            raise ValueError(f"{what} '{shown}': character U+{ord(value[e.start]):04X} at position {e.start} is a "
                             "lone surrogate, not text") from None
    return value


def parse_policy(text):
    """Parses a policy ('shape:3+priority', or '@FILE'); ValueError names a bad token or character."""
    return _core.parse_policy(_utf8(text, "policy"))


def load_policy_file(path):
    """Reads a policy file as `tandem tune` writes it; ValueError if missing or invalid, or its path is not text."""
    return _core.load_policy_file(_utf8(path, "policy file"))


def as_policy(policy):
    """A Policy from what a user may pass for one.

    - a Policy: itself;
    - a path (``os.PathLike``, or a ``str`` with a ``/`` in it, which no policy token has): a policy
      file as ``tandem tune`` writes it;
    - any other ``str``: policy text, e.g. ``"shape:3+priority"``, or ``"@FILE"`` for a file.

    Raises ValueError with tandem's message for a bad token or an unreadable file.
    """
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, os.PathLike):
        return load_policy_file(os.fspath(policy))
    if isinstance(policy, str):
        return load_policy_file(policy) if "/" in policy else parse_policy(policy)
    raise TypeError(f"a policy is a str, a path or a tandem.Policy, not {type(policy).__name__}")
