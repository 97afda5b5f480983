{#-- Generic test: fails with one row per partition whose files drift from their target.
     models: [{name: m, data_tests: [{sized_file_layout: {max_small_files_per_partition: 1,
                                                          max_file_size_ratio: 1.25}}]}] --#}
{% test sized_file_layout(model, max_small_files_per_partition=none, max_file_size_ratio=none,
                          small_file_limit=none, target_file_size=none) %}
  {%- set problems = [] -%}
  {%- if execute -%}
    {%- set problems = adapter.sized_layout_problems(model, max_small_files_per_partition,
                                                     max_file_size_ratio, small_file_limit,
                                                     target_file_size) -%}
  {%- endif -%}
  {%- if problems | length == 0 %}
    select cast(null as string) as partition, cast(null as string) as problem where 1 = 0
  {%- else %}
    select * from values
    {%- for p in problems %}
      ('{{ p[0] | replace("'", "\\'") }}', '{{ p[1] | replace("'", "\\'") }}'){{ ',' if not loop.last }}
    {%- endfor %}
    as problems(partition, problem)
  {%- endif %}
{% endtest %}
