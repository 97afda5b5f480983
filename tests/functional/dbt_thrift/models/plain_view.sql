{{ config(materialized='view') }}
select id, label from {{ ref('plain_table') }} where id % 2 = 0
