/* check_evq: the event queue orders by (time, insertion) and survives growth. */
#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include "evq.h"

START_TEST(orders_by_time)
{
    evq_t q;
    evq_init(&q);
    double ts[] = { 5, 1, 4, 2, 3, 0.5, 9, 7 };
    for (int i = 0; i < 8; i++) ck_assert_int_eq(evq_push(&q, (event_t){ .time = ts[i], .a = i }), 0);
    double last = -1;
    event_t ev;
    int n = 0;
    while (evq_pop(&q, &ev)) {
        ck_assert(ev.time >= last);
        last = ev.time;
        n++;
    }
    ck_assert_int_eq(n, 8);
    evq_free(&q);
}
END_TEST

START_TEST(equal_times_fifo)
{
    evq_t q;
    evq_init(&q);
    for (int i = 0; i < 1000; i++) evq_push(&q, (event_t){ .time = (double)(i % 3), .a = i });
    event_t ev;
    int prev[3] = { -1, -1, -1 };
    double last = -1;
    while (evq_pop(&q, &ev)) {
        int k = (int)ev.time;
        ck_assert(ev.time >= last);
        ck_assert_int_gt(ev.a, prev[k]);   /* insertion order within one time */
        prev[k] = ev.a;
        last = ev.time;
    }
    evq_free(&q);
}
END_TEST

START_TEST(random_heap_property)
{
    evq_t q;
    evq_init(&q);
    srand(42);
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 500; i++) evq_push(&q, (event_t){ .time = (double)(rand() % 50), .a = i });
        for (int i = 1; i < q.n; i++) {
            const event_t *p = &q.heap[(i - 1) / 2], *c = &q.heap[i];
            ck_assert(p->time < c->time || (p->time == c->time && p->seq < c->seq));
        }
        event_t ev;
        for (int i = 0; i < 300; i++) ck_assert_int_eq(evq_pop(&q, &ev), 1);
    }
    ck_assert_int_eq(evq_size(&q), 20 * 200);
    ck_assert_ptr_nonnull(evq_peek(&q));
    evq_free(&q);
    event_t ev;
    ck_assert_int_eq(evq_pop(&q, &ev), 0);
    ck_assert_ptr_null(evq_peek(&q));
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(orders_by_time), CHECK_TEST(equal_times_fifo), CHECK_TEST(random_heap_property)};
    return check_main("evq", "core", tests, CHECK_N(tests), 0, NULL);
}
