{#-- The snapshots' source at state KR_STATE (1, 2, ...; an environment variable, not a
     var: a var that changes makes dbt parse the whole project again): ids 1..(20 + 4 *
     state), each in region id % 3; an id changes (a new name and updated_at) at every state
     t >= 2 that divides it; ids with id % 5 = 1 are deleted at states 3 and 4 and come back
     at 5. So a run inserts new keys, closes changed and deleted versions, opens new ones. --#}
{% macro kr_snapshot_source() %}
  {%- set state = env_var('KR_STATE', '1') | int -%}
  select id, id % 3 as region, concat('n', id, 'v', version) as name,
         cast(date_add(date'2024-01-01', version) as timestamp) as updated_at
  from (
    select id, greatest(1, 1 {%- for t in range(2, state + 1) %}, if(id % {{ t }} = 0, {{ t }}, 1){% endfor %}) as version
    from range(1, {{ 21 + 4 * state }})
  )
  {%- if state in [3, 4] %}
  where id % 5 <> 1
  {%- endif %}
{% endmacro %}


{#-- The microbatch models' rows: each batch reads its days of kr_events (its event_time). --#}
{% macro kr_microbatch_select() %}
  select event_id, event_date, amount, payload, date_format(event_date, 'yyyy-MM') as event_month
  from {{ ref('kr_events') }}
{% endmacro %}


{#-- dbt run-operation kr_print_rows --args '{tables: {name: [column or expression, ...]}}'
     Prints each table of the profile's schema as one line `KR_ROWS <name> <json rows>`, the
     values as Spark casts them to string (NULL as null): what Spark reads through the
     metastore, for the test to compare. --#}
{% macro kr_print_rows(tables) %}
  {%- for name, columns in tables.items() -%}
    {%- set casts = [] -%}
    {%- for column in columns -%}
      {%- do casts.append('cast(' ~ column ~ ' as string)') -%}
    {%- endfor -%}
    {%- set result = run_query('select ' ~ casts | join(', ') ~ ' from ' ~ target.schema ~ '.' ~ name) -%}
    {%- set rows = [] -%}
    {%- for row in result.rows -%}
      {%- do rows.append(row.values() | list) -%}
    {%- endfor -%}
    {{ print('KR_ROWS ' ~ name ~ ' ' ~ tojson(rows)) }}
  {%- endfor -%}
{% endmacro %}
