-- Two partition columns, bytes_per_row from config.
{{ config(materialized='sized_incremental', partition_by=['segment', 'country'],
          incremental_strategy='insert_overwrite', target_file_size='512KB', bytes_per_row=90) }}
select e.event_id, e.event_date, e.amount, e.payload, c.segment, c.country
from {{ ref('stg_events') }} e join {{ ref('customers') }} c using (customer_id)
