-- Unpartitioned sized table.
{{ config(materialized='sized_incremental', incremental_strategy='insert_overwrite',
          target_file_size='1MB') }}
select * from {{ ref('customers') }}
