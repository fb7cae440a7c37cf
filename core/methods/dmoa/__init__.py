"""DMoA, Differentiable Mixture-of-Agents (arXiv 2605.15706): ``method`` the protocol and registration,
``routing`` the router's equations (NumPy), ``router`` the trained network, ``prompts``, ``events``,
``steer`` (its steering hook) and ``train`` (the entropy-driven router training)."""
