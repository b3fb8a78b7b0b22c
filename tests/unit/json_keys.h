/* Keys of a JSON document, counted through nested objects and arrays of objects: a dropped key changes it. */
#ifndef PSC_TEST_JSON_KEYS_H
#define PSC_TEST_JSON_KEYS_H

#include <jansson.h>

static inline size_t count_keys(json_t *o)
{
    size_t n = json_object_size(o);
    const char *k;
    json_t *v;

    json_object_foreach(o, k, v) {
        if (json_is_object(v))
            n += count_keys(v);
        if (json_is_array(v))
            for (size_t i = 0; i < json_array_size(v); i++)
                n += json_is_object(json_array_get(v, i)) ? count_keys(json_array_get(v, i)) : 0;
    }
    return n;
}

#endif
