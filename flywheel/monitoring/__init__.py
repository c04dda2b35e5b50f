"""flywheel.monitoring: watching the flywheel while it runs and after it promotes.

Pure functions turn what the stages already record (the trainer's per-step metrics, the verifiers table,
ingest counts, evaluation reports, pool sizes) into `Signal`s against `AlertThresholds`; `alerts` keeps one
record per incident and `webhook` delivers it; `sequential` decides a rollback from the champion's live pass
rate; `weights` fingerprints checkpoints so served and registered weights can be compared. No Dagster here:
`assets/monitoring.py` wires these into asset checks and sensors.
"""
