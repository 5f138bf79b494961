"""Vector envs behind SB3's ``VecEnv`` interface, faster than SB3's own on the same work and with its
semantics exact (same-step autoreset, ``terminal_observation``, ``TimeLimit.truncated``, seeds, episode
statistics): a lean in-process one for any env, gymnasium's NumPy-vectorized CartPole, and EnvPool.
``rlexp.vecenvs.choice`` picks one for an env config; ``rlexp.builders.envs`` builds it."""
