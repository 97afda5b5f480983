-- dbt's microbatch on a sized_spark profile: materialized='incremental' with
-- incremental_strategy='microbatch' writes through the sized engine, one commit per daily
-- batch, each replacing exactly its day's rows; the table is partitioned by month, so
-- batches and partitions do not line up (a batch rewrites the files holding its day).
-- Enabled with --vars '{microbatch: true}' (every day from `begin` to today would be a
-- batch of a plain `dbt build`); run it with --event-time-start / --event-time-end.
-- mb_version changes the rows of a rerun window; SIZED_MB_FAIL_DAY fails that day's batch.
{{ config(materialized='incremental', incremental_strategy='microbatch',
          event_time='event_date', begin='2025-01-01', batch_size='day',
          partition_by=['event_month'], target_file_size='64KB',
          enabled=var('microbatch', false)) }}
select event_id, event_date, customer_id, amount + {{ var('mb_version', 1) }} - 1 as amount,
       {{ var('mb_version', 1) }} as version, payload,
       date_format(event_date, 'yyyy-MM') as event_month
from {{ ref('stg_events') }}
{% if env_var('SIZED_MB_FAIL_DAY', '') %}
where event_date <> date'{{ env_var('SIZED_MB_FAIL_DAY') }}'
   or raise_error('injected failure of the batch of {{ env_var('SIZED_MB_FAIL_DAY') }}') is null
{% endif %}
