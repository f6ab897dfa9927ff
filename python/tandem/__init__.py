"""tandem: GPU computation and NCCL collectives run in tandem.

This package needs neither a GPU nor PyTorch: it parses policies with tandem's own parser (its
one-line messages, raised as ValueError). The controls inside PyTorch are in ``tandem.torch``.

    >>> import tandem
    >>> p = tandem.parse_policy("priority+nccl-ctas:8")
    >>> p.comm_priority, p.nccl_config
    (True, {'minCTAs': 8, 'maxCTAs': 8})
"""
import os

from tandem._core import Policy, __version__, load_policy_file, parse_policy, policy_help

__all__ = ["Policy", "__version__", "as_policy", "load_policy_file", "parse_policy", "policy_help"]


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
