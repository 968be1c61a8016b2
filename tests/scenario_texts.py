"""Scenario TOML texts the tests of more than one stage run (written to a tmp file by each test)."""

#: Two sync-RL workloads with dynamic sampling on one pool: "easy" in rounds of the shortfall, "hard" in
#: fixed rounds of 12 groups with 80% valid rollouts (so it trims informative groups past B = 8).
TWO_RL = """
[fleet]
cap = 128

[[workloads]]
name = "easy"
kind = "sync-rl"
steps = 20
train_s = 60
hold = { dist = "lognormal", median_s = 300, sigma = 0.5 }
dynamic_sampling = { groups = 8, group_size = 4, task_pass = [0.5, 0.9], valid_rate = 1.0 }

[[workloads]]
name = "hard"
kind = "sync-rl"
steps = 20
train_s = 60
hold = { dist = "lognormal", median_s = 300, sigma = 0.5 }
dynamic_sampling = { groups = 8, group_size = 4, task_pass = [0.1, 0.5], valid_rate = 0.8, round_groups = 12 }

[run]
seed = 2
"""
