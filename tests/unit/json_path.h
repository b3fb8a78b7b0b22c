/*
 * For the tests of the JSON readers (facts, calibration): a good file with
 * one value changed or removed, by a path such as "gpus[1].nvlinks[3]".
 */
#ifndef PSC_TEST_JSON_PATH_H
#define PSC_TEST_JSON_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* The value at path; its parent and last key (or index, else -1) through out-parameters. */
static inline json_t *psc_test_json_walk(json_t *doc, const char *path, json_t **parent, char *key, size_t keylen,
                                         long *index)
{
    json_t *cur = doc, *up = NULL;
    const char *p = path;

    *index = -1;
    key[0] = '\0';
    while (*p) {
        if (*p == '[') {
            char *end;

            *index = strtol(p + 1, &end, 10);
            key[0] = '\0';
            up = cur;
            cur = json_array_get(cur, (size_t)*index);
            p = end + 1;
        } else {
            size_t n = strcspn(p, ".[");

            snprintf(key, keylen, "%.*s", (int)n, p);
            *index = -1;
            up = cur;
            cur = json_object_get(cur, key);
            p += n;
        }
        if (*p == '.')
            p++;
    }
    *parent = up;
    return cur;
}

/* The JSON file at file with path set to the JSON text value (NULL: the key or element removed). */
static inline json_t *psc_test_json_mutated(const char *file, const char *path, const char *value)
{
    json_t *doc = json_load_file(file, 0, NULL), *parent, *v = NULL;
    char key[64];
    long index;

    assert_non_null(doc);
    psc_test_json_walk(doc, path, &parent, key, sizeof(key), &index);
    assert_non_null(parent);
    if (value) {
        v = json_loads(value, JSON_DECODE_ANY, NULL);
        assert_non_null(v);
    }
    if (index >= 0)
        assert_int_equal(v ? json_array_set_new(parent, (size_t)index, v) : json_array_remove(parent, (size_t)index),
                         0);
    else
        assert_int_equal(v ? json_object_set_new(parent, key, v) : json_object_del(parent, key), 0);
    return doc;
}

#endif
