{{ config(materialized='sized_incremental', partition_by=['event_date'],
          incremental_strategy='insert_overwrite', target_file_size='32KB',
          distribution='exact') }}
select * from {{ ref('stg_events') }}
{% if is_incremental() %}
where event_date >= date_sub(date'2025-01-01', -({{ var('event_days') }} - 7))
{% endif %}
