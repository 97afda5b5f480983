-- distribution='none': plain Spark (one file per task per partition), for comparison.
{{ config(materialized='sized_incremental', partition_by=['event_date'],
          incremental_strategy='insert_overwrite', distribution='none') }}
select * from {{ ref('stg_events') }}
{% if is_incremental() %}
where event_date >= date_sub(date'2025-01-01', -({{ var('event_days') }} - 7))
{% endif %}
