{#-- The pre-hook would write a table if it ran: it must not, the method check comes first. --#}
{{ config(materialized='sized_incremental', incremental_strategy='insert_overwrite',
          partition_by=['day'],
          pre_hook="create table if not exists {{ this.schema }}.sized_orders_pre_hook as select 1 as x") }}
select id, label, date'2025-01-01' as day from {{ ref('plain_table') }}
