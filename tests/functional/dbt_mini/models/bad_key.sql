{{ config(materialized='sized_incremental', unique_key='order_id', partition_by=['id']) }}
select 1 as id, 2 as v
