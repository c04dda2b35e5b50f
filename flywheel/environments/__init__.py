"""Environments: the protocol every task domain implements, and the registry that finds them.

    from flywheel.environments import get_environment, environment_for, all_domains
    env = environment_for("rg.basic_arithmetic")
    tasks = env.tasks("rg.basic_arithmetic", "train", 8, seed=0)
    verdict = env.verify(tasks[0], tasks[0].solution)
"""
