"""TopoDIM: one typed graph per problem. ``method`` the protocol and registration, ``policy`` the policy
network, ``generators`` the edge-type generators, ``prompts``, ``events`` and ``steer`` (its steering hook)."""
