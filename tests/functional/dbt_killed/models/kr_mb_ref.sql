-- dbt's microbatch through the sized engine: a commit per daily batch, the month partition
-- rewritten by each (kr_mb is killed mid-batch, kr_mb_ref runs the same window cleanly).
{{ config(materialized='incremental', incremental_strategy='microbatch',
          event_time='event_date', begin='2025-01-01', batch_size='day',
          partition_by=['event_month'], target_file_size='64KB') }}
{{ kr_microbatch_select() }}
