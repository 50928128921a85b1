#include "CVoipd.h"
