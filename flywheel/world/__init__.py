"""The SIMULATED production world: users whose requests become the day's raw logs (`traffic`), the seam a
served model answers them through (`responder`), and the made-up production model that serves them before
any champion exists (`simulated_model`). Nothing here is real user data; mining reads its logs like any
production logs and never its ground truth."""
