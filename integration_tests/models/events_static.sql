-- Static overrides: file_count skips the count, bytes_per_row skips the sample.
{{ config(materialized='sized_incremental', partition_by=['event_type'],
          incremental_strategy='insert_overwrite', file_count=8, distribution='range') }}
select event_id, event_type, amount from {{ ref('stg_events') }}
