/* main.c: bin/calib -- the calibration command line over the CUDA timer.  See calib.h. */
#include "calib.h"

int main(int argc, char **argv)
{
    return calib_main(argc, argv, calib_gpu_timer_new);
}
